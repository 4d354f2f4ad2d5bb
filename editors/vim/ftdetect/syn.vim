" editors/vim/ftdetect/syn.vim -- syncc operator files
autocmd BufRead,BufNewFile *.syn setfiletype syn
